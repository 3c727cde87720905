import gc


def test_script():
    """id(a.grad) stays the same over reads: the ids are printed, for an upstream report."""
    a = {fw}.ones(3, requires_grad=True, device=device)
    (a * 2).sum().backward()

    # 1. read a.grad many times without keeping a reference in between
    many = [id(a.grad) for _ in range(100)]

    # 2. read it around allocations: a dropped wrapper's address is taken by the new tensor, so
    #    a framework that re-creates the wrapper on each read hands out alternating ids
    first = id(a.grad)
    seen = []
    for _ in range(50):
        seen.append(id(a.grad))
        filler = {fw}.ones(3, device=device)
        seen.append(id(a.grad))
        del filler
    keep = [{fw}.ones(3, device=device) for _ in range(64)]
    del keep
    gc.collect()
    seen.append(id(a.grad))

    print("id(a.grad) over 100 plain reads:", len(set(many)), "distinct value(s)")
    print("id(a.grad) read around allocations, first 10 reads:")
    for i, value in enumerate(seen[:10]):
        print(f"  read {i}: {value}" + ("" if value == first else "   <- differs from the first read"))
    distinct = sorted(set(seen))
    print(f"{len(distinct)} distinct value(s) over {len(seen)} reads")

    assert len(set(many)) == 1, f"id(a.grad) took {len(set(many))} distinct values over 100 reads"
    assert distinct == [first], f"id(a.grad) took {len(distinct)} distinct values over {len(seen)} reads"
