def register():
    import plug.patch  # noqa: F401
