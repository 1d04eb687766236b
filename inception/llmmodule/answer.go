package llmmodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
)

// MaxAnswerBytes bounds a model answer; a longer one is refused unread.
const MaxAnswerBytes = 64 << 10

// answerSchemaName names the structured-output schema sent to providers.
const answerSchemaName = "rein_inception"

// answer is the model's structured output.
type answer struct {
	Rein      bool    `json:"rein"`
	ErrorType *string `json:"error_type"`
	Evidence  string  `json:"evidence"`
	Reasoning string  `json:"reasoning"`
}

// answerSchema is the JSON Schema of the inception answer for one taxonomy:
// error_type is one of the prompt's type names or null, and null exactly
// when rein is false.
type answerSchema struct {
	raw    json.RawMessage
	schema *jsonschema.Schema
}

func newAnswerSchema(tax *inception.Taxonomy) (*answerSchema, error) {
	names := []any{}
	for _, et := range tax.PromptTypes() {
		names = append(names, et.Name)
	}
	names = append(names, nil)
	doc := map[string]any{
		"type":                 "object",
		"additionalProperties": false,
		"required":             []any{"rein", "error_type", "evidence", "reasoning"},
		"properties": map[string]any{
			"rein":       map[string]any{"type": "boolean"},
			"error_type": map[string]any{"type": []any{"string", "null"}, "enum": names},
			"evidence":   map[string]any{"type": "string", "maxLength": 2000},
			"reasoning":  map[string]any{"type": "string", "maxLength": 8000},
		},
		"if":   map[string]any{"properties": map[string]any{"rein": map[string]any{"const": true}}},
		"then": map[string]any{"properties": map[string]any{"error_type": map[string]any{"type": "string"}}},
		"else": map[string]any{"properties": map[string]any{"error_type": map[string]any{"type": "null"}}},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("answer schema: %w", err)
	}
	var inst any
	if err := json.Unmarshal(raw, &inst); err != nil {
		return nil, fmt.Errorf("answer schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("answer.json", inst); err != nil {
		return nil, fmt.Errorf("answer schema: %w", err)
	}
	s, err := c.Compile("answer.json")
	if err != nil {
		return nil, fmt.Errorf("answer schema: %w", err)
	}
	return &answerSchema{raw: raw, schema: s}, nil
}

func (a *answerSchema) responseSchema() *llm.ResponseSchema {
	return &llm.ResponseSchema{Name: answerSchemaName, Schema: a.raw}
}

// parse validates a model answer. A non-empty reason means the answer is
// unusable (the decision is then "no activation, failed").
func (a *answerSchema) parse(resp llm.Response) (answer, string) {
	body := resp.Content
	if strings.TrimSpace(body) == "" {
		// Providers that force a tool call deliver the answer as arguments.
		for _, tc := range resp.ToolCalls {
			if tc.Name == answerSchemaName {
				body = string(tc.Arguments)
				break
			}
		}
	}
	if len(body) > MaxAnswerBytes {
		return answer{}, fmt.Sprintf("answer too large (%d bytes, limit %d)", len(body), MaxAnswerBytes)
	}
	body = strings.TrimSpace(body)
	if body == "" {
		return answer{}, "empty answer"
	}
	if strings.HasPrefix(body, "```") {
		return answer{}, "answer wrapped in a markdown fence"
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var inst any
	if err := dec.Decode(&inst); err != nil {
		return answer{}, "answer is not JSON: " + truncate(err.Error(), 200)
	}
	if dec.More() {
		return answer{}, "trailing data after the JSON answer"
	}
	if err := a.schema.Validate(inst); err != nil {
		return answer{}, "answer does not match the schema: " + truncate(oneLine(err.Error()), 300)
	}
	var ans answer
	if err := json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&ans); err != nil {
		return answer{}, "answer is not JSON: " + truncate(err.Error(), 200)
	}
	return ans, ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
