package llmmodule

import (
	"context"
	"fmt"
	"strings"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/inception/planted"
	"github.com/reinception/rein/internal/llm"
)

// LLMConfig configures the llm module.
type LLMConfig struct {
	Taxonomy *inception.Taxonomy // default DefaultTaxonomy()
	Client   llm.Client
	// Plan is PlanTemplate (default) or PlanGenerated.
	Plan string
	// DialogueBudget is the surface dialogue budget in runes (default
	// DefaultDialogueBudget).
	DialogueBudget int
	// MaxReasoningRunes caps a generated plan (default
	// DefaultMaxReasoningRunes).
	MaxReasoningRunes int
	// MaxTokens caps the model's answer (default 400).
	MaxTokens int
	// Temperature of the call (default 0).
	Temperature *float64
	// Examples, opt-in, are each tenant's labelled turns shown to the
	// model in its prompt (fewshot.go), at most MaxExamples of them
	// (default DefaultMaxExamples), in the order given.
	Examples    map[string][]inception.Example
	MaxExamples int
}

// LLMModule is the model-backed inception module: one call per user turn
// that both detects and plans.
type LLMModule struct {
	cfg    LLMConfig
	schema *answerSchema
	static *staticPrompts
}

// NewLLM builds the llm module.
func NewLLM(cfg LLMConfig) (*LLMModule, error) {
	if cfg.Client == nil {
		return nil, fmt.Errorf("%w: llm module needs a model client", inception.ErrInvalidConfig)
	}
	if cfg.Taxonomy == nil {
		cfg.Taxonomy = inception.DefaultTaxonomy()
	}
	switch cfg.Plan {
	case "":
		cfg.Plan = planted.PlanTemplate
	case planted.PlanTemplate, planted.PlanGenerated:
	default:
		return nil, fmt.Errorf("%w: plan %q is not %s or %s", inception.ErrInvalidConfig, cfg.Plan, planted.PlanTemplate, planted.PlanGenerated)
	}
	if cfg.DialogueBudget <= 0 {
		cfg.DialogueBudget = DefaultDialogueBudget
	}
	if cfg.MaxReasoningRunes <= 0 {
		cfg.MaxReasoningRunes = planted.DefaultMaxReasoningRunes
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 400
	}
	if cfg.Temperature == nil {
		zero := 0.0
		cfg.Temperature = &zero
	}
	if len(cfg.Taxonomy.PromptTypes()) == 0 {
		return nil, fmt.Errorf("%w: every error type of taxonomy %s is held out", inception.ErrInvalidConfig, cfg.Taxonomy.Version)
	}
	s, err := newAnswerSchema(cfg.Taxonomy)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", inception.ErrInvalidConfig, err)
	}
	if cfg.MaxExamples <= 0 {
		cfg.MaxExamples = DefaultMaxExamples
	}
	return &LLMModule{cfg: cfg, schema: s, static: newStaticPrompts(cfg.Taxonomy, cfg.Examples, cfg.MaxExamples)}, nil
}

// Name implements Module.
func (m *LLMModule) Name() string { return inception.ModuleLLM }

// Taxonomy returns the module's taxonomy.
func (m *LLMModule) Taxonomy() *inception.Taxonomy { return m.cfg.Taxonomy }

// Request builds the model request for one turn (exported for tests, golden
// files and cassette recording).
func (m *LLMModule) Request(in inception.Input) llm.Request {
	return llm.Request{
		Purpose:        llm.PurposeInception,
		System:         m.static.get(in.Tenant, in.Domain, in.Tools),
		Messages:       []llm.Message{{Role: llm.RoleUser, Content: BuildDynamicPrompt(in.Dialogue, m.cfg.DialogueBudget)}},
		ResponseSchema: m.schema.responseSchema(),
		MaxTokens:      m.cfg.MaxTokens,
		Temperature:    m.cfg.Temperature,
	}
}

// Detect implements Module. A model error or deadline is returned wrapped in
// ErrModel; an unusable answer is a failed, inactive Decision.
func (m *LLMModule) Detect(ctx context.Context, in inception.Input) (inception.Decision, error) {
	if _, ok := in.LastUser(); !ok {
		return inception.Decision{}, fmt.Errorf("%w: the dialogue must end with a user turn", inception.ErrInvalidInput)
	}
	resp, err := m.cfg.Client.Chat(ctx, m.Request(in))
	if err != nil {
		return inception.Decision{}, fmt.Errorf("%w: %s: %w", inception.ErrModel, m.cfg.Client.Provider(), err)
	}
	d := inception.Decision{Model: resp.Model, Tokens: resp.Usage.Total(), TaxonomyVersion: m.cfg.Taxonomy.Version}
	if d.Model == "" {
		d.Model = m.cfg.Client.Model()
	}
	ans, reason := m.schema.parse(resp)
	if reason != "" {
		d.Failed, d.FailReason = true, reason
		return d, nil
	}
	if !ans.Rein {
		return d, nil
	}
	et, ok := m.cfg.Taxonomy.Type(*ans.ErrorType)
	if !ok || et.HeldOut { // the schema enum already refuses these
		d.Failed, d.FailReason = true, "unknown error type "+*ans.ErrorType
		return d, nil
	}
	d.Rein, d.ErrorType, d.Category, d.RecoveryTool = true, et.Name, et.Category, et.RecoveryTool
	tools := m.toolNames(in.Tools)
	var refused []string
	ev, bad := planted.GroundEvidence(ans.Evidence, in.Dialogue, tools)
	if bad != "" {
		// The slot points at the user's latest message instead; the
		// detection records why.
		refused = append(refused, bad+"; the evidence slot was left generic")
	}
	d.Evidence = ev
	d.Reasoning = planted.RenderPlan(et.RecoveryPlan, d.Evidence)
	if m.cfg.Plan == planted.PlanGenerated {
		if text, bad := planted.GeneratedCheck(ans.Reasoning, et.RecoveryTool, tools, m.cfg.MaxReasoningRunes, dialogueText(in.Dialogue)); bad == "" {
			d.Reasoning = text
		} else {
			// The template plan stays, so a bad generated plan never
			// reaches the agent; the detection records why.
			refused = append(refused, bad+"; the taxonomy's plan was planted")
		}
	}
	d.FailReason = strings.Join(refused, "; ")
	return d, nil
}

// dialogueText is the surface dialogue as one text, for grounding checks.
func dialogueText(d []inception.Utterance) string {
	var b strings.Builder
	for _, u := range d {
		b.WriteString(u.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func (m *LLMModule) toolNames(tools []llm.Tool) []string {
	names := m.cfg.Taxonomy.RecoveryToolNames()
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}
