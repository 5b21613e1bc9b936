"""A run with no configuration and no golden file: a config filled in from a corpus or an existing index
(`autoconfig`), and drafting more questions while the run's pick is not sure (`drafted`)."""
