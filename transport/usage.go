package transport

// Usage is the token count of one call, as the upstream reported it.
// TotalTokens is the billable total: what the quota is settled to.
type Usage struct {
	// PromptTokens counts every input token, cached ones included.
	PromptTokens int
	// CompletionTokens counts every output token, reasoning included.
	CompletionTokens int
	// TotalTokens is the billable total, PromptTokens + CompletionTokens
	// unless the upstream reported another figure.
	TotalTokens int
	// CachedPromptTokens is the part of PromptTokens served from the
	// provider's prompt cache, when reported (0 otherwise).
	CachedPromptTokens int
	// ReasoningTokens is the part of CompletionTokens spent on hidden
	// reasoning, when reported (0 otherwise).
	ReasoningTokens int
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:       u.PromptTokens + v.PromptTokens,
		CompletionTokens:   u.CompletionTokens + v.CompletionTokens,
		TotalTokens:        u.TotalTokens + v.TotalTokens,
		CachedPromptTokens: u.CachedPromptTokens + v.CachedPromptTokens,
		ReasoningTokens:    u.ReasoningTokens + v.ReasoningTokens,
	}
}

// Billable returns the token count a quota is settled to: TotalTokens when
// reported, else PromptTokens + CompletionTokens.
func (u Usage) Billable() int {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.PromptTokens + u.CompletionTokens
}
