"""Real crawls of local sites, and the Scrapy harness driving the middleware end to end."""
