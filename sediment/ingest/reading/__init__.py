"""Reading input exactly: files record by record, one JSON value, a vendor payload by dotted path."""
