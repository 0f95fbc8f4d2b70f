"""CI providers' webhooks and vendor-neutral CI outcomes: the providers' translators, the run
model they share and the webhook registry."""
