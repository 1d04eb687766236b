package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/llm"
)

// moduleFlags choose and configure the inception module; serve, demo,
// detect and shadow share them.
type moduleFlags struct {
	// onClient, when set, is told of each model client built (serve
	// registers its availability with /readyz).
	onClient func(endpoint string, c llm.Client)
	module   string
	taxonomy string
	plan     string
	provider string
	model    string
	baseURL  string
	// record and cassette (eval) record the inception model's calls to,
	// or answer them from, a cassette file.
	record, cassette string
	// heldOut (eval --held-out) names types held out of the taxonomy.
	heldOut []string
	// wrapClient (eval), when set, wraps the inception model's client
	// (token estimates for a model that reports no usage).
	wrapClient func(llm.Client) llm.Client
}

func (f *moduleFlags) bind(fs *pflag.FlagSet, defaultModule string) {
	fs.StringVar(&f.module, "module", defaultModule, "inception module: rules (offline), llm (one model call per user turn) or cascade (rules gate, then llm)")
	fs.StringVar(&f.taxonomy, "taxonomy", "", "taxonomy YAML file replacing the six embedded default error types")
	fs.StringVar(&f.plan, "plan", inception.PlanTemplate, "planted reasoning: template (the taxonomy's plan with the evidence quote) or generated (the model's own, validated)")
	fs.StringVar(&f.provider, "provider", "", "model provider for llm/cascade: openai, anthropic, replay or scripted (default $REIN_LLM_PROVIDER)")
	fs.StringVar(&f.model, "model", "", "model name (default $REIN_LLM_MODEL)")
	fs.StringVar(&f.baseURL, "base-url", "", "provider base URL, e.g. http://127.0.0.1:8000/v1 for an OpenAI-compatible server (default $REIN_LLM_BASE_URL)")
}

// llmConfig is the model configuration: REIN_LLM_* from the environment,
// overridden by the flags given.
func (f *moduleFlags) llmConfig() llm.Config {
	cfg := llm.ConfigFromEnv()
	if f.provider != "" {
		cfg.Provider = f.provider
	}
	if f.model != "" {
		cfg.Model = f.model
	}
	if f.baseURL != "" {
		cfg.BaseURL = f.baseURL
	}
	return cfg
}

// build returns the configured module and its taxonomy.
func (f *moduleFlags) build(reg prometheus.Registerer) (inception.Module, *inception.Taxonomy, error) {
	tax := inception.DefaultTaxonomy()
	if f.taxonomy != "" {
		var err error
		if tax, err = inception.LoadTaxonomy(f.taxonomy); err != nil {
			return nil, nil, err
		}
	}
	if len(f.heldOut) > 0 {
		var err error
		if tax, err = tax.WithHeldOut(f.heldOut...); err != nil {
			return nil, nil, err
		}
	}
	newLLM := func() (inception.Module, error) {
		lc := f.llmConfig()
		lc.Endpoint = llm.PurposeInception
		if f.record != "" {
			lc.Record = f.record
		}
		if f.cassette != "" {
			lc.Cassette = f.cassette
		}
		client, err := llm.New(lc, reg)
		if err != nil {
			return nil, fmt.Errorf("--module %s needs a model: %w", f.module, err)
		}
		if f.wrapClient != nil {
			client = f.wrapClient(client)
		}
		if f.onClient != nil {
			f.onClient(llm.PurposeInception, client)
		}
		return inception.NewLLM(inception.LLMConfig{Taxonomy: tax, Client: client, Plan: f.plan})
	}
	switch f.module {
	case inception.ModuleRules:
		m, err := inception.NewRules(inception.RulesConfig{Taxonomy: tax})
		return m, tax, err
	case inception.ModuleLLM:
		m, err := newLLM()
		return m, tax, err
	case inception.ModuleCascade:
		gate, err := inception.NewRules(inception.RulesConfig{Taxonomy: tax, Mode: inception.RulesRecall})
		if err != nil {
			return nil, nil, err
		}
		model, err := newLLM()
		if err != nil {
			return nil, nil, err
		}
		c, err := inception.NewCascade(gate, model)
		if err != nil {
			return nil, nil, err
		}
		// The inception model down: the rules module in its precise mode
		// decides, recorded as such, rather than failing open.
		if c.Fallback, err = inception.NewRules(inception.RulesConfig{Taxonomy: tax}); err != nil {
			return nil, nil, err
		}
		return c, tax, nil
	}
	return nil, nil, fmt.Errorf("--module %q: want rules, llm or cascade", f.module)
}
