"""The report's renderings: the console table, the HTML page, Markdown, SARIF, GitHub
annotations, the Perfetto trace and the diff of two reports. They sit above the checks that
feed them (ci/, oracle/, lint/) and read reports through report/ (the schema)."""
