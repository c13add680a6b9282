import admit


def test_public_api_is_exactly_the_curated_list():
    members = {n for n in dir(admit) if not n.startswith("_")}
    exported = set(admit.__all__) - {"__version__"}
    assert exported <= members
    for name in exported:
        assert getattr(admit, name) is not None
    assert {"pack", "Pipeline", "PackRequest", "Chunk", "Principal", "Access", "Decision", "PackResult"} <= exported
