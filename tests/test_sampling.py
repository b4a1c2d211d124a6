"""CI's half of the ``sampled`` tests is drawn anew each run and replays from its seed."""

from conftest import in_sample

IDS = [f"tests/dualad/table/test_rules.py::test_case[{i}]" for i in range(400)]


def test_a_seed_draws_the_same_half_every_time():
    assert [in_sample(i, "123") for i in IDS] == [in_sample(i, "123") for i in IDS]


def test_seeds_draw_different_halves_that_together_cover_every_test():
    halves = [{i for i in IDS if in_sample(i, str(seed))} for seed in range(20)]
    assert all(150 < len(h) < 250 for h in halves)
    assert len({frozenset(h) for h in halves}) == 20
    assert set().union(*halves) == set(IDS)
