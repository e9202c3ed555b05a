package transport

// ImageTokenEstimate is what one image part counts in EstimateTokens. The
// providers price an image by its size and detail (OpenAI: 85 tokens at low
// detail, up to about 1,100 for a large picture at high detail; Anthropic:
// width × height / 750, about 1,600 for a megapixel), which the gateway does
// not decode; this fixed figure sits at the top of the common range. Set
// ChatRequest.EstTokens when images are large or many.
const ImageTokenEstimate = 1024

// EstimateTokens is the token reservation of a chat request: about four
// bytes per token of everything that is sent — roles, text, text parts, tool
// calls and results, tool names, descriptions and schemas, the response
// schema — plus ImageTokenEstimate per image, plus the answer's MaxTokens.
// A caller's EstTokens, when positive, is used instead.
func EstimateTokens(req ChatRequest) int64 {
	if req.EstTokens > 0 {
		return int64(req.EstTokens)
	}
	n, images := 0, 0
	for _, m := range req.Messages {
		n += len(m.Role) + len(m.Content) + len(m.Name) + len(m.ToolCallID)
		for _, p := range m.Parts {
			switch p.Type {
			case PartImageURL:
				images++
			default:
				n += len(p.Text)
			}
		}
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Function.Name) + len(tc.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Function.Name) + len(t.Function.Description)
		if raw, err := SchemaJSON(t.Function.Parameters); err == nil {
			n += len(raw)
		}
	}
	if rf := req.ResponseFormat; rf != nil && rf.JSONSchema != nil {
		n += len(rf.JSONSchema.Name) + len(rf.JSONSchema.Description)
		if raw, err := SchemaJSON(rf.JSONSchema.Schema); err == nil {
			n += len(raw)
		}
	}
	for _, s := range req.Stop {
		n += len(s)
	}
	return int64((n+3)/4 + images*ImageTokenEstimate + max(req.MaxTokens, 0))
}
