"""Shared test helpers (readers, oracles, fixtures data): imported by the tests, never collected."""
