"""Recrawl policies are objects: the built-in ones by name, one's own by import path."""

from __future__ import annotations

import math
from typing import ClassVar

import pytest

from scrapy_simhash.exceptions import ConfigurationError
from scrapy_simhash.recrawl import RecrawlConfig, open_recrawl_store
from scrapy_simhash.recrawl.config import DAY
from scrapy_simhash.recrawl.policy import POLICIES, BudgetPolicy, TargetPolicy, load_policy
from scrapy_simhash.settings import recrawl_config
from tests.conftest import Clock


class EveryTwoHours:
    """A policy of one's own: a fixed two hours, whatever the page does."""

    uses_budget = False

    def interval(
        self,
        config: RecrawlConfig,
        rate: float,
        previous_interval: float | None,
        changed: bool | None,
        multiplier: float | None,
    ) -> float:
        return 7200.0


class NotAPolicy:
    pass


def test_built_in_policies_are_objects_by_name() -> None:
    assert load_policy("target") is POLICIES["target"]
    assert RecrawlConfig(policy="auto").schedule is POLICIES["target"]
    assert RecrawlConfig(policy="auto", budget_per_day=10).schedule is POLICIES["budget"]
    assert recrawl_config({"SIMHASH_RECRAWL_POLICY": "NUTCH"}).schedule is POLICIES["nutch"]


def test_a_policy_of_ones_own_schedules_the_store(clock: Clock) -> None:
    config = recrawl_config(
        {"SIMHASH_RECRAWL_POLICY": "tests.unit.test_recrawl_policies.EveryTwoHours"}
    )
    assert isinstance(config.schedule, EveryTwoHours)
    with open_recrawl_store("memory://", config=config, clock=clock) as store:
        visit = store.observe("https://a.test/x", 1)
        assert visit.interval_secs == 7200.0
        assert visit.next_due == clock.now + 7200.0


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("weekly", "must be one of auto, budget"),
        ("tests.unit.test_recrawl_policies.Missing", "cannot be loaded"),
        ("no_such_module_anywhere.Policy", "cannot be loaded"),
        ("tests.unit.test_recrawl_policies.NotAPolicy", "is not a policy"),
    ],
)
def test_a_policy_that_cannot_work_refuses_with_the_reason(name: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        recrawl_config({"SIMHASH_RECRAWL_POLICY": name})


def test_the_budget_policy_falls_back_to_the_target_until_a_multiplier_is_solved() -> None:
    config = RecrawlConfig(policy="budget", budget_per_day=100)
    rate = 1 / DAY
    target = TargetPolicy().interval(config, rate, None, None, None)
    assert BudgetPolicy().interval(config, rate, None, None, None) == target
    assert BudgetPolicy().interval(config, rate, None, None, math.inf) == target
    # A page changing far faster than any budget can follow is given up on.
    assert BudgetPolicy().interval(config, 1.0, None, None, 10.0) == math.inf


def test_the_change_distance_follows_the_fingerprint_width() -> None:
    assert recrawl_config({}).change_distance == 3
    assert recrawl_config({"SIMHASH_BITS": 128}).change_distance == 6
    assert (
        recrawl_config({"SIMHASH_BITS": 128, "SIMHASH_RECRAWL_CHANGE_DISTANCE": 2}).change_distance
        == 2
    )


class HalfTheBudget:
    """A budget policy of one's own: the built-in one, at half its frequency."""

    uses_budget = True

    def interval(
        self,
        config: RecrawlConfig,
        rate: float,
        previous_interval: float | None,
        changed: bool | None,
        multiplier: float | None,
    ) -> float:
        self.multipliers.append(multiplier)
        return 2 * BudgetPolicy().interval(config, rate, previous_interval, changed, multiplier)

    multipliers: ClassVar[list[float | None]] = []


def test_a_budget_policy_of_ones_own_gets_the_solved_multiplier(clock: Clock) -> None:
    name = "tests.unit.test_recrawl_policies.HalfTheBudget"
    with pytest.raises(ConfigurationError, match="needs SIMHASH_RECRAWL_BUDGET_PER_DAY > 0"):
        recrawl_config({"SIMHASH_RECRAWL_POLICY": name})
    config = recrawl_config({"SIMHASH_RECRAWL_POLICY": name, "SIMHASH_RECRAWL_BUDGET_PER_DAY": 10})
    HalfTheBudget.multipliers.clear()
    with open_recrawl_store("memory://", config=config, clock=clock) as store:
        store.observe("https://a.test/1", 1)
        store.observe("https://a.test/2", 2)
    # Solved over the store's rate histogram before each observation, as for "budget".
    assert len(HalfTheBudget.multipliers) == 2
    assert all(m is not None and m > 0 for m in HalfTheBudget.multipliers)
