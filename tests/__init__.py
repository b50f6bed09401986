"""The test suite, a package: its helpers are imported as `tests.helpers`, `tests.scripted_server`, ..."""
