pytest_plugins = ["sediment.testing"]
