"""Static facts about a module: names, compiled regions, value kinds, purity, mutation."""
