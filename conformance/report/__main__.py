import sys

from conformance.report.build import main

sys.exit(main())
