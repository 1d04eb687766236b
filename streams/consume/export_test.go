package consume

// InFlightBytes is what the consumer's byte budget holds now and the most
// it held at once.
func InFlightBytes(c *Consumer) (held, peak int64) { return c.budget.inUse() }
