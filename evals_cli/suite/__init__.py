"""Loading suite.yaml into a validated SuiteSpec."""
