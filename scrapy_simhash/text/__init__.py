"""Main-text extraction: the part of a page that is the page's own content."""
