"""Benchmarks: run by hand or with `make bench`, never collected by `make test`."""
