"""Tests of the HTTP service against a real server on loopback."""
