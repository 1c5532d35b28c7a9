"""Tests of the zerda command line, run as the installed console script."""
