"""The whole system on one machine, for `make demo` and `make up`."""
