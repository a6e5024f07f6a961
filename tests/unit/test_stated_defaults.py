"""What the README and CHANGES state about defaults and the version is what the code does.

A user reads the README before any code: a default distance, width or feature kind said in
one place and another in the code (or the README disagreeing with itself) is a wrong
answer they cannot see. Every place the README states one of these defaults is read here.
"""

from __future__ import annotations

import re
from pathlib import Path

import scrapy_simhash
from scrapy_simhash import settings as simhash_settings
from scrapy_simhash.fingerprint import FingerprintConfig
from scrapy_simhash.index.defaults import default_distances

REPO = Path(__file__).resolve().parents[2]
README = (REPO / "README.md").read_text(encoding="utf-8")


def table_default(name: str) -> str:
    """The Default column of the settings table row of ``name``."""
    row = re.search(rf"^\| `{name}` \| (.+?) \|", README, re.MULTILINE)
    assert row is not None, f"{name} has no row in the README's settings tables"
    return row.group(1)


def test_the_readme_states_the_code_s_default_distance_everywhere() -> None:
    k = simhash_settings.max_distance({})
    assert k == default_distances(64)[0]
    # The introduction, the add-on section and the command summary.
    stated = re.findall(r"within k bits\s+\(default (\d+)\)", README)
    stated += re.findall(r"main text is within (\d+) bits", README)
    stated += re.findall(r"\[-k (\d+)\]", README)
    assert len(stated) >= 4, stated
    assert {int(n) for n in stated} == {k}
    wide = simhash_settings.max_distance({"SIMHASH_BITS": 128})
    assert table_default("SIMHASH_MAX_DISTANCE") == f"`{k}` (`{wide}` at 128 bits)"
    exact, exact_wide = default_distances(64)[1], default_distances(128)[1]
    assert table_default("SIMHASH_INDEX_EXACT_DISTANCE").startswith(
        f"`{exact}` (`{exact_wide}` at 128 bits"
    )
    assert table_default("SIMHASH_CONFIRM_DISTANCE") == f"`{simhash_settings.confirm_distance({})}`"
    change = simhash_settings.recrawl_config({}).change_distance
    change_wide = simhash_settings.recrawl_config({"SIMHASH_BITS": 128}).change_distance
    assert table_default("SIMHASH_RECRAWL_CHANGE_DISTANCE") == (
        f"`{change}` (`{change_wide}` at 128 bits)"
    )


def test_the_readme_states_the_code_s_default_width() -> None:
    bits = FingerprintConfig().bits
    assert table_default("SIMHASH_BITS") == f"`{bits}`"
    assert re.findall(r"computes a (\d+)-bit \*\*SimHash\*\*", README) == [str(bits)]
    assert f"{bits} bits is the default." in README


def test_the_readme_states_the_code_s_default_features() -> None:
    config = FingerprintConfig()
    assert config.cjk_features == "chars"
    assert table_default("SIMHASH_CJK_FEATURES") == f"`{config.cjk_features}`"
    # The introduction says how Chinese is tokenised by default, and not that jieba does it.
    intro = README.split("## ", 1)[0]
    assert "Chinese as single characters by default" in intro
    assert not re.search(r"jieba for Chinese", intro)
    assert table_default("SIMHASH_WEIGHTING") == f"`{config.weighting}`"
    assert table_default("SIMHASH_TITLE_WEIGHT") == f"`{config.title_weight}`"
    assert table_default("SIMHASH_SHINGLE_SIZE") == f"`{config.shingle_size}`"
    assert table_default("SIMHASH_MIN_TEXT_CHARS") == f"`{config.min_text_chars}`"
    assert table_default("SIMHASH_TOKENIZER") == f"`{config.tokenizer}`"
    if config.title_weight == 0:  # no title boost by default: the introduction names none
        assert "title boost" not in intro


def test_the_version_is_the_newest_in_changes() -> None:
    changes = (REPO / "CHANGES.rst").read_text(encoding="utf-8")
    newest = re.search(r"^(\d+\.\d+\.\d+) \(", changes, re.MULTILINE)
    assert newest is not None
    assert scrapy_simhash.__version__ == newest.group(1) == "0.3.0"
