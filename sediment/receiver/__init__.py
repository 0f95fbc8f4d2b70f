"""The live receiver: verified webhook and telemetry deliveries, durably spooled, then ingested."""
