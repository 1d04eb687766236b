package generate

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/reinception/rein/agentworker/taubench"
	"github.com/reinception/rein/inception"
	"github.com/reinception/rein/internal/app/eval"
	"github.com/reinception/rein/internal/app/eval/run"
	"github.com/reinception/rein/internal/llm"
)

// Purpose labels the generator's model calls (metrics, cassettes: the
// cassette file is cassettes/<Purpose>.jsonl).
const Purpose = "scenario_generator"

// SchemaName names the structured-output schema sent to the model.
const SchemaName = "rein_scenario_opening"

//go:embed prompt.md
var systemPrompt string

// SystemPrompt is the generator's system prompt (prompt.md beside this
// file, embedded): what an opening is and what each error type and
// follow-up style needs.
func SystemPrompt() string { return systemPrompt }

// Config is one generation.
type Config struct {
	// Domain is airline or retail; required.
	Domain string
	// Split is the τ-bench task file (default test).
	Split string
	// TauBench is the τ-bench data directory (default eval.DefaultTauBenchDir).
	TauBench string
	// AllTasks turns the task filter off. By default only the tasks
	// eval.PaperTasks keeps are used (they change the database and need no
	// outputs: a reconstruction of the paper's unpublished filter).
	AllTasks bool
	// Tasks, when above 0, keeps that many of those tasks, drawn with Seed
	// (a cheap run); 0 takes every one.
	Tasks int
	// Seed draws the tasks and is written into every request as its
	// variation number, so another seed asks for other openings.
	Seed int64
	// Types are the error types to write (default eval.ErrorTypes).
	Types []string
	// Styles are the follow-up styles (default lazy_feedback, double_check).
	Styles []string
	// Concurrency is how many model calls run at once (default 4). The
	// output order does not depend on it.
	Concurrency int
	// Taxonomy gives each type's definition and examples (default the
	// embedded taxonomy; held-out flags do not matter here).
	Taxonomy *inception.Taxonomy
	// MaxTokens caps one answer (default 1200).
	MaxTokens int
	// Clean adds one clean scenario per task (the unmodified task, no
	// opening, no model call), so that a run of the set measures false
	// activations and over-deferral too.
	Clean bool
	// Attempts is how many times an opening is asked for (default 1):
	// after a rejection the model is shown its answer and the reason and
	// asked again (RetryMessage). A failed model call is not retried here
	// (the provider already retried it).
	Attempts int
}

func (c *Config) defaults() {
	if c.Split == "" {
		c.Split = "test"
	}
	if c.TauBench == "" {
		c.TauBench = eval.DefaultTauBenchDir
	}
	if len(c.Types) == 0 {
		c.Types = slices.Clone(eval.ErrorTypes)
	}
	if len(c.Styles) == 0 {
		c.Styles = []string{eval.StyleLazyFeedback, eval.StyleDoubleCheck}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 4
	}
	if c.Taxonomy == nil {
		c.Taxonomy = inception.DefaultTaxonomy()
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 1200
	}
	if c.Attempts <= 0 {
		c.Attempts = 1
	}
}

func (c Config) validate() error {
	if c.Domain != taubench.Airline && c.Domain != taubench.Retail {
		return fmt.Errorf("%w: domain %q (want airline or retail)", ErrInvalidConfig, c.Domain)
	}
	for _, t := range c.Types {
		if eval.Category(t) == "" || t == eval.TypeNone {
			return fmt.Errorf("%w: error type %q (want one of %s)", ErrInvalidConfig, t, strings.Join(eval.ErrorTypes, ", "))
		}
		if _, ok := c.Taxonomy.Type(t); !ok {
			return fmt.Errorf("%w: error type %q is not in the taxonomy", ErrInvalidConfig, t)
		}
	}
	for _, s := range c.Styles {
		if s != eval.StyleLazyFeedback && s != eval.StyleDoubleCheck {
			return fmt.Errorf("%w: style %q (want lazy_feedback or double_check)", ErrInvalidConfig, s)
		}
	}
	if c.Tasks < 0 {
		return fmt.Errorf("%w: tasks %d is negative", ErrInvalidConfig, c.Tasks)
	}
	return nil
}

// Draft is the model's answer: an opening with what the validation reads.
type Draft struct {
	ErrorTurn   string   `json:"error_turn"`
	Evidence    []string `json:"evidence"`
	Readings    []string `json:"readings"`
	Mishandling string   `json:"mishandling"`
	FollowUp    string   `json:"follow_up"`
	Note        string   `json:"note"`
}

// Rejected is one opening that was not kept, with the reason (one line
// of the rejected file). It is not a scenario: the loader refuses it.
type Rejected struct {
	ID        string `json:"id"`
	Domain    string `json:"domain"`
	Split     string `json:"split,omitempty"`
	TaskID    int    `json:"task_id"`
	ErrorType string `json:"error_type"`
	Style     string `json:"style"`
	Reason    string `json:"reason"`
	// Attempts is how many answers were asked for; Reason and Draft are
	// the last one's.
	Attempts int    `json:"attempts"`
	Draft    *Draft `json:"draft,omitempty"`
}

// Output is what a generation produced, in (task, type, style) order.
type Output struct {
	// Accepted are the error scenarios whose openings were accepted.
	Accepted []eval.Scenario
	// Clean are the clean scenarios (Config.Clean), one per task.
	Clean    []eval.Scenario
	Rejected []Rejected
	// Model names the model that wrote the openings.
	Model string
	// TasksInSplit is the split's task count, TasksKept how many of them
	// the task filter kept (all of them with Config.AllTasks).
	TasksInSplit, TasksKept int
}

// job is one (task, error type, style).
type job struct {
	task      int
	errorType string
	style     string
}

// id is the scenario id of a job: gen-<domain>-<split>-<task>-<type>-<style>.
func (j job) id(domain, split string) string {
	return fmt.Sprintf("gen-%s-%s-%d-%s-%s", domain, split, j.task, j.errorType, j.style)
}

// Generate asks the model for an opening for every (task, error type,
// style), validates each (Validate) and returns the accepted scenarios and
// the rejected openings with their reasons. A model call that fails is a
// rejection; a cassette miss or a cancelled ctx ends the generation.
func Generate(ctx context.Context, cfg Config, client llm.Client, progress *run.Progress) (*Output, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if client == nil {
		return nil, fmt.Errorf("%w: no model client", ErrInvalidConfig)
	}
	dataDir := filepath.Join(cfg.TauBench, cfg.Domain)
	dom, err := taubench.Load(cfg.Domain, dataDir)
	if err != nil {
		return nil, err
	}
	tasks, err := taubench.LoadTasks(dataDir, cfg.Split)
	if err != nil {
		return nil, err
	}
	chk := newChecker(cfg.Domain, cfg.Taxonomy, dom.Tools())
	var jobs []job
	kept := eval.PaperTasks(cfg.Domain, tasks)
	if cfg.AllTasks {
		kept = pickTasks(len(tasks), 0, 0)
	}
	var picked []int
	for _, i := range pickTasks(len(kept), cfg.Tasks, cfg.Seed) {
		picked = append(picked, kept[i])
	}
	for _, t := range picked {
		for _, et := range cfg.Types {
			for _, st := range cfg.Styles {
				jobs = append(jobs, job{task: t, errorType: et, style: st})
			}
		}
	}
	progress.Begin(len(jobs), 0)
	progress.Stage(cfg.Domain + " · " + client.Model())
	type outcome struct {
		scenario *eval.Scenario
		rejected *Rejected
	}
	results := make([]outcome, len(jobs))
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		fatal    error
		next     int
		gctx, cn = context.WithCancel(ctx)
	)
	defer cn()
	for range min(cfg.Concurrency, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(jobs) || gctx.Err() != nil {
					return
				}
				j := jobs[i]
				s, rej, err := one(gctx, cfg, client, chk, dom, tasks[j.task], j)
				if err != nil {
					mu.Lock()
					if fatal == nil {
						fatal = err
					}
					mu.Unlock()
					cn()
					return
				}
				results[i] = outcome{s, rej}
				progress.Done(rej != nil)
			}
		}()
	}
	wg.Wait()
	if fatal != nil {
		return nil, fatal
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	progress.Finish()
	out := &Output{Model: client.Model(), TasksInSplit: len(tasks), TasksKept: len(kept)}
	if cfg.Clean {
		for _, t := range picked {
			c := eval.Scenario{ID: fmt.Sprintf("gen-%s-%s-%d-clean", cfg.Domain, cfg.Split, t), Domain: cfg.Domain, TaskID: t,
				ErrorType: eval.TypeNone, Note: "the unmodified task"}
			if cfg.Split != "test" {
				c.Split = cfg.Split
			}
			out.Clean = append(out.Clean, c)
		}
	}
	for _, r := range results {
		if r.scenario != nil {
			out.Accepted = append(out.Accepted, *r.scenario)
		} else {
			out.Rejected = append(out.Rejected, *r.rejected)
		}
	}
	return out, nil
}

// pickTasks returns the task indices to use: all of n, or k of them drawn
// with seed, in ascending order.
func pickTasks(n, k int, seed int64) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if k <= 0 || k >= n {
		return idx
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x5ce7a710))
	r.Shuffle(n, func(a, b int) { idx[a], idx[b] = idx[b], idx[a] })
	idx = idx[:k]
	sort.Ints(idx)
	return idx
}

// one writes and validates the opening of one job.
func one(ctx context.Context, cfg Config, client llm.Client, chk *checker, dom *taubench.Domain, task taubench.Task, j job) (*eval.Scenario, *Rejected, error) {
	rej := &Rejected{ID: j.id(cfg.Domain, cfg.Split), Domain: cfg.Domain, TaskID: j.task, ErrorType: j.errorType, Style: j.style}
	if cfg.Split != "test" {
		rej.Split = cfg.Split
	}
	recs := userRecords(dom, task.UserID)
	et, _ := cfg.Taxonomy.Type(j.errorType)
	msgs := []llm.Message{{Role: llm.RoleUser, Content: UserMessage(cfg.Domain, task, recs.text, dom.Tools(), et, j.style, cfg.Seed)}}
	var d Draft
	for rej.Attempts = 1; ; rej.Attempts++ {
		resp, err := client.Chat(ctx, llm.Request{Purpose: Purpose, System: systemPrompt, MaxTokens: cfg.MaxTokens, Messages: msgs,
			ResponseSchema: &llm.ResponseSchema{Name: SchemaName, Schema: answerSchema}})
		switch {
		case errors.Is(err, llm.ErrCassetteMiss) || ctx.Err() != nil:
			return nil, nil, fmt.Errorf("%s: %w", rej.ID, err)
		case err != nil:
			rej.Reason = "model call failed: " + oneLine(err.Error())
			return nil, rej, nil
		}
		var reason string
		d, reason = parseDraft(resp)
		rej.Draft = nil
		if reason == "" {
			rej.Draft = &d
			reason = chk.Validate(j.errorType, j.style, d, recs.candidates)
		}
		if reason == "" {
			break
		}
		rej.Reason = reason
		if rej.Attempts >= cfg.Attempts {
			return nil, rej, nil
		}
		prev := answerText(resp)
		if strings.TrimSpace(prev) == "" {
			prev = "(no answer)"
		}
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: prev},
			llm.Message{Role: llm.RoleUser, Content: RetryMessage(reason)})
	}
	note := fmt.Sprintf("generated by %s (seed %d)", client.Model(), cfg.Seed)
	if rej.Attempts > 1 {
		note = fmt.Sprintf("generated by %s (seed %d, attempt %d)", client.Model(), cfg.Seed, rej.Attempts)
	}
	if n := oneLine(d.Note); n != "" {
		note += ": " + n
	}
	s := &eval.Scenario{ID: rej.ID, Domain: cfg.Domain, Split: rej.Split, TaskID: j.task, ErrorType: j.errorType, Style: j.style,
		Opening: &eval.Opening{ErrorTurn: strings.TrimSpace(d.ErrorTurn), Mishandling: strings.TrimSpace(d.Mishandling), FollowUp: strings.TrimSpace(d.FollowUp)},
		Note:    note}
	return s, nil, nil
}

// records is what the data holds about a task's user: as text for the
// prompt, and how many things (reservations; orders' items) a reference
// could point at.
type records struct {
	text       string
	candidates int
}

// userRecords renders the user's record and their reservations or
// orders (each clipped) and counts the candidates of a reference.
func userRecords(dom *taubench.Domain, userID string) records {
	var b strings.Builder
	u, ok := dom.Record("users", userID)
	if !ok {
		return records{text: "(no record for user " + userID + ")"}
	}
	fmt.Fprintf(&b, "user %s: %s\n", userID, clip(taubench.ToPyJSON(u), 1500))
	obj, _ := u.(*taubench.Object)
	var rs records
	for _, table := range []string{"reservations", "orders"} {
		if obj == nil {
			break
		}
		ids, _ := obj.Get(table)
		list, _ := ids.([]any)
		for _, id := range list {
			sid, _ := id.(string)
			rec, ok := dom.Record(table, sid)
			if !ok {
				continue
			}
			fmt.Fprintf(&b, "%s %s: %s\n", strings.TrimSuffix(table, "s"), sid, clip(taubench.ToPyJSON(rec), 1200))
			if table == "reservations" {
				rs.candidates++
			} else if o, ok := rec.(*taubench.Object); ok {
				items, _ := o.Get("items")
				n, _ := items.([]any)
				rs.candidates += max(len(n), 1)
			}
		}
	}
	rs.text = b.String()
	return rs
}

// UserMessage is the generator's request for one (task, type, style): the
// tagged sections prompt.md describes.
func UserMessage(domain string, task taubench.Task, records string, tools []llm.Tool, et *inception.ErrorType, style string, seed int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<domain>%s</domain>\n<task>\n%s\n</task>\n", domain, strings.TrimSpace(task.Instruction))
	acts, _ := json.Marshal(task.Actions)
	fmt.Fprintf(&b, "<actions>%s</actions>\n<records>\n%s</records>\n", acts, records)
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	fmt.Fprintf(&b, "<tools>%s</tools>\n", strings.Join(names, ", "))
	fmt.Fprintf(&b, "<mistake name=%q category=%q>\n%s\n", et.Name, et.Category, oneLine(et.Definition))
	for _, ex := range et.Examples {
		fmt.Fprintf(&b, "example: %s\n", oneLine(ex))
	}
	b.WriteString("</mistake>\n")
	fmt.Fprintf(&b, "<style>%s</style>\n<variation>%d</variation>\n", style, seed)
	return b.String()
}

// answerSchema is the JSON Schema of a Draft: every key required, no
// other, and only keywords every structured-output provider accepts (the
// lengths are checked by Validate instead).
var answerSchema = json.RawMessage(`{"type":"object","additionalProperties":false,
"required":["error_turn","evidence","readings","mishandling","follow_up","note"],
"properties":{
"error_turn":{"type":"string"},
"evidence":{"type":"array","items":{"type":"string"}},
"readings":{"type":"array","items":{"type":"string"}},
"mishandling":{"type":"string"},
"follow_up":{"type":"string"},
"note":{"type":"string"}}}`)

// RetryMessage asks the model again after its opening was rejected.
func RetryMessage(reason string) string {
	return "That opening cannot be used: " + reason + ". Write the three messages again for the same task, " +
		"mistake and style, fixing this, and answer with the JSON object only."
}

// answerText is the answer as the model gave it: its text, or the
// arguments of the forced tool call some providers use for structured
// output.
func answerText(resp llm.Response) string {
	if strings.TrimSpace(resp.Content) != "" {
		return resp.Content
	}
	for _, tc := range resp.ToolCalls {
		if tc.Name == SchemaName {
			return string(tc.Arguments)
		}
	}
	return ""
}

// parseDraft reads the model's answer (answerText); a Markdown fence
// around the JSON is tolerated. A non-empty reason rejects it.
func parseDraft(resp llm.Response) (Draft, string) {
	body := strings.TrimSpace(answerText(resp))
	if strings.HasPrefix(body, "```") {
		body = strings.TrimPrefix(strings.TrimPrefix(body, "```json"), "```")
		body = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(body), "```"))
	}
	if body == "" {
		return Draft{}, ReasonEmptyAnswer
	}
	var d Draft
	dec := json.NewDecoder(bytes.NewReader([]byte(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		return Draft{}, "answer is not the JSON object asked for: " + clip(oneLine(err.Error()), 200)
	}
	return d, ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
