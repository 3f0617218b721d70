"""The rea command line."""
