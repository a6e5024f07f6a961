"""A crawl's reference for ``crawl_throughput.py``: resiliparse's main-content extraction run
on every response in the crawl process, as a spider that wants each page's main text would
run it, with nothing stored and nothing decided.

It is what the issue's bytes-to-main-text reference costs inside the same crawl, so that the
add-on's ratio can be read beside the ratio of extraction alone.
"""

from __future__ import annotations

from typing import Any

from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.encoding import detect_encoding
from resiliparse.parse.html import HTMLTree
from scrapy.crawler import Crawler
from scrapy.http import Request, Response


class ResiliparseMainText:
    """Downloader middleware: each response's main text, with resiliparse, in the reactor."""

    def __init__(self, crawler: Crawler) -> None:
        self.stats = crawler.stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ResiliparseMainText:
        return cls(crawler)

    def process_response(self, request: Request, response: Response, spider: Any) -> Response:
        body = response.body
        tree = HTMLTree.parse_from_bytes(body, detect_encoding(body))
        text = extract_plain_text(tree, main_content=True)
        self.stats.inc_value("reference/main_text_chars", len(text))
        return response
