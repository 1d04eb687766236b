package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
)

// ParseToolList decodes a tool catalogue: an OpenAI-style list
// ([{"type":"function","function":{name, description, parameters}}]) or a
// plain list of {name, description, parameters}.
func ParseToolList(data []byte) ([]Tool, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToolList, err)
	}
	tools := make([]Tool, 0, len(raw))
	for i, r := range raw {
		var wrapped struct {
			Type     string `json:"type"`
			Function *Tool  `json:"function"`
		}
		if err := json.Unmarshal(r, &wrapped); err != nil {
			return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalidToolList, i, err)
		}
		t := wrapped.Function
		if t == nil {
			t = &Tool{}
			if err := json.Unmarshal(r, t); err != nil {
				return nil, fmt.Errorf("%w: entry %d: %w", ErrInvalidToolList, i, err)
			}
		}
		if t.Name == "" {
			return nil, fmt.Errorf("%w: entry %d has no name", ErrInvalidToolList, i)
		}
		if len(bytes.TrimSpace(t.Parameters)) == 0 {
			t.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		tools = append(tools, *t)
	}
	return tools, nil
}

// LoadToolList reads a tool catalogue file (see ParseToolList).
func LoadToolList(path string) ([]Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidToolList, err)
	}
	tools, err := ParseToolList(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tools, nil
}
