package agentworker

// CacheBytes is what the stage's state cache holds by its measure.
func CacheBytes(s *Stage) int64 { return s.cache.Bytes() }

// CacheLen is how many states the stage's cache holds.
func CacheLen(s *Stage) int { return s.cache.Len() }
