package run

import (
	"context"
	_ "embed"
	"fmt"
	"strings"

	"github.com/reinception/rein/internal/llm"
)

//go:embed usersim.yaml
var simUserScript []byte

// SimUser returns the scripted user simulator (usersim.yaml beside this
// file): it states the task's instruction, restates it when asked a
// question, and otherwise stops.
func SimUser() (llm.Client, error) {
	s, err := llm.ParseScript(simUserScript)
	if err != nil {
		return nil, fmt.Errorf("user simulator script: %w", err)
	}
	return llm.NewScripted(s), nil
}

// StopToken ends the conversation when the user simulator writes it
// (τ-bench's convention).
const StopToken = "###STOP###"

// Greeting is the agent's first line as the user simulator sees it; it is
// not published (the customer speaks first on the pipeline).
const Greeting = "Hi! How can I help you today?"

// Line is one utterance of the surface dialogue.
type Line struct {
	Role string `json:"role"` // "user" or "agent"
	Text string `json:"text"`
}

// User simulator prompts (Config.UserPrompt).
const (
	// UserPromptTauBench (the default) holds the simulator to τ-bench's
	// rule: it never invents what its instruction does not give.
	UserPromptTauBench = "taubench"
	// UserPromptRein is rein's earlier prompt, which lets the simulator
	// answer what its instruction does not settle.
	UserPromptRein = "rein"
)

// UserSimPrompt is the user simulator's system prompt for a task
// instruction under the named prompt (UserPromptTauBench or
// UserPromptRein). Both are rein's own wording; the default follows the
// rules τ-bench gives its simulator: one message at a time, the
// instruction's details only when needed, nothing made up, stop when done.
func UserSimPrompt(prompt, instruction string) string {
	rules := `- Write only the customer's next message, briefly and in the first person, as a person would type it.
- Give the agent the details of the instruction only when they are needed, a few at a time.
- Never make up a detail the instruction does not give (no names, numbers, addresses or preferences of your own): when the agent asks for something the instruction does not say, say you do not have it or do not know.
- Do not repeat the instruction word for word, and do not reveal that you follow one.`
	if prompt == UserPromptRein {
		rules = `- Write only the customer's next message, briefly and in the first person, as a person would type it.
- Give the agent the details of the instruction only when they are needed; never invent details it does not give.
- Do not repeat the instruction word for word, and do not reveal that you follow one.
- When the agent asks something the instruction does not settle, answer as the instruction's customer would.`
	}
	return `You play a customer who contacts a customer-service agent, so that the agent can be tested.
The instruction below says who you are and what you want. Follow these rules:
` + rules + `
- When your goal is met, when you have been handed to a human, or when the conversation cannot go anywhere, write only ` + StopToken + `.

<instruction>
` + strings.TrimSpace(instruction) + `
</instruction>`
}

// userSim continues a conversation as the customer.
type userSim struct {
	client llm.Client
	// prompt names the system prompt (UserPromptTauBench when empty).
	prompt string
	// temperature is sent with every call.
	temperature float64
}

// next returns the customer's next message, or stop when the simulator
// ends the conversation, and the call's token usage. The simulator sees the dialogue from its side:
// the agent's lines are user messages, its own are assistant messages,
// and the conversation starts with the agent's Greeting.
func (u userSim) next(ctx context.Context, instruction string, lines []Line) (text string, stop bool, usage llm.Usage, err error) {
	msgs := []llm.Message{{Role: llm.RoleUser, Content: Greeting}}
	for _, l := range lines {
		role := llm.RoleUser
		if l.Role == "user" {
			role = llm.RoleAssistant
		}
		msgs = append(msgs, llm.Message{Role: role, Content: l.Text})
	}
	resp, err := u.client.Chat(ctx, llm.Request{Purpose: llm.PurposeUser, System: UserSimPrompt(u.prompt, instruction), Messages: msgs,
		Temperature: &u.temperature})
	if err != nil {
		return "", false, usage, fmt.Errorf("user simulator: %w", err)
	}
	text = strings.TrimSpace(resp.Content)
	if strings.Contains(text, StopToken) {
		return "", true, resp.Usage, nil
	}
	if text == "" {
		return "", false, resp.Usage, fmt.Errorf("user simulator: %w", ErrEmptyUserTurn)
	}
	return text, false, resp.Usage, nil
}
