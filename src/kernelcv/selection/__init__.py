"""Model selection: grids over kernel parameters x lam, granularity choice, search objects."""
