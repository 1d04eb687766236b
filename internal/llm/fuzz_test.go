package llm

import (
	"context"
	"encoding/json"
	"os"
	"testing"
)

// FuzzParseScript: any input either fails with an error or yields a script
// whose answers never panic and always carry valid JSON tool arguments.
func FuzzParseScript(f *testing.F) {
	example, err := os.ReadFile("testdata/airline_demo.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(example, "show reservation ABC123")
	f.Add([]byte(`{"rules": [{"when": {"user": "(?P<x>.*)"}, "respond": {"tool_calls": [{"name": "f", "arguments": {"a": "{{.user.x}}"}}]}}]}`), `quote " and {{`)
	f.Add([]byte("default: {respond: {json: {a: [1, '{{.turn}}', null]}}}"), "")
	f.Fuzz(func(t *testing.T, src []byte, user string) {
		s, err := ParseScript(src)
		if err != nil {
			return
		}
		for _, purpose := range []string{PurposeInception, PurposeAgent} {
			resp, err := NewScripted(s).Chat(context.Background(), Request{Purpose: purpose, Messages: []Message{userMsg(user)}})
			if err != nil {
				continue
			}
			for _, tc := range resp.ToolCalls {
				if !json.Valid(tc.Arguments) {
					t.Fatalf("invalid arguments %q", tc.Arguments)
				}
			}
		}
	})
}

// FuzzCanonicalRequest: the key never panics and ignores argument formatting.
func FuzzCanonicalRequest(f *testing.F) {
	f.Add("hi", `{"a": 1, "b": [true, null]}`)
	f.Add("", `not json`)
	f.Fuzz(func(t *testing.T, content, args string) {
		req := Request{Messages: []Message{userMsg(content), {Role: RoleAssistant, ToolCalls: []ToolCall{{Name: "f", Arguments: json.RawMessage(args)}}}}}
		k1 := RequestKey(req)
		if json.Valid([]byte(args)) {
			var v any
			_ = json.Unmarshal([]byte(args), &v)
			re, _ := json.MarshalIndent(v, "", "   ")
			req.Messages[1].ToolCalls[0].Arguments = re
			if k2 := RequestKey(req); k2 != k1 && !hasNumbers(v) {
				t.Fatalf("reformatting changed the key: %s vs %s", args, re)
			}
		}
	})
}

// hasNumbers: re-encoding through float64 may change number spelling
// (1e2 → 100), which legitimately changes the key.
func hasNumbers(v any) bool {
	switch x := v.(type) {
	case float64:
		return true
	case []any:
		for _, e := range x {
			if hasNumbers(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasNumbers(e) {
				return true
			}
		}
	}
	return false
}
