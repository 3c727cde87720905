"""``reference.utils``: torch's utility namespace, as far as the reference has it (``weak``)."""
from reference.utils import weak

__all__ = ["weak"]
