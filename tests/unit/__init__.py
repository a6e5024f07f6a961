"""Tests of one part at a time: the core, the command line, one store's specifics."""
