package taubench

import (
	"math"
	"strings"
	"testing"
)

func TestPyFloat(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{100, "100.0"}, {29.299999999999955, "29.299999999999955"}, {0.1, "0.1"}, {1e16, "1e+16"},
		{1.5e-5, "1.5e-05"}, {0.0001, "0.0001"}, {1234567890123456, "1234567890123456.0"},
		{-2.55, "-2.55"}, {0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1e22, "1e+22"}, {123e-20, "1.23e-18"},
		{math.Inf(1), "inf"}, {math.NaN(), "nan"},
	} {
		if got := string(pyFloat(nil, tc.f)); got != tc.want {
			t.Errorf("pyFloat(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func TestPyJSON(t *testing.T) {
	v, err := ParseJSON([]byte(`{"b": 1, "a": [1.0, 2.50, -0, 1E2, true, null, "x<&>\"\\\n\u00e9\ud83d\ude00\u007f"], "b": 2, "e": {}, "l": []}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"b": 2, "a": [1.0, 2.5, 0, 100.0, true, null, "x<&>\"\\\n\u00e9\ud83d\ude00\u007f"], "e": {}, "l": []}`
	if got := ToPyJSON(v); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, bad := range []string{``, `{`, `[1,]`, `{"a" 1}`, `01`, `1.`, `"\x"`, `{"a":1} x`, `99999999999999999999`, "\"a\x01\""} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("ParseJSON(%q) succeeded", bad)
		}
	}
	inf, err := ParseJSON([]byte(`[NaN, Infinity, -Infinity]`))
	if err != nil || ToPyJSON(inf) != `[NaN, Infinity, -Infinity]` {
		t.Errorf("non-finite round trip: %v %v", ToPyJSON(inf), err)
	}
}

func TestCanonicalRendering(t *testing.T) {
	v, _ := ParseJSON([]byte(`{"z": [1], "a": {"k": "it's"}, "m": [], "q": "say \"hi\" it's", "f": 2.0, "t": true, "n": null, "c": "tab\tnl\nbs\\"}`))
	want := `(('a', (('k', "it's"),)), ('c', 'tab\tnl\nbs\\'), ('f', 2.0), ('m', ()), ('n', None), ('q', 'say "hi" it\'s'), ('t', True), ('z', (1,)))`
	if got := string(appendCanon(nil, v)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEqualKinds(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		eq   bool
		py   bool
	}{
		{`250`, `250.0`, false, true},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, true, true},
		{`[1, 2]`, `[2, 1]`, false, false},
		{`true`, `1`, false, true},
		{`"x"`, `"x"`, true, true},
	} {
		a, _ := ParseJSON([]byte(tc.a))
		b, _ := ParseJSON([]byte(tc.b))
		if Equal(a, b) != tc.eq || pyEq(a, b) != tc.py {
			t.Errorf("%s vs %s: Equal %v pyEq %v", tc.a, tc.b, Equal(a, b), pyEq(a, b))
		}
	}
}

func TestCalculate(t *testing.T) {
	for _, tc := range []struct{ expr, want, err string }{
		{"2 + 2", "4.0", ""},
		{"10 / 3", "3.33", ""},
		{"2 ** 10", "1024.0", ""},
		{"-2 ** 2", "-4.0", ""},
		{"7 // 2 * 1.5", "4.5", ""},
		{"-7 // 2", "-4.0", ""},
		{"(1 + 2) * (3 - 4.5)", "-4.5", ""},
		{"1e5", "", "invalid characters in expression"},
		{"10 ** 17", "1e+17", ""},
		{"0.1 + 0.2", "0.3", ""},
		{".5 + 5.", "5.5", ""},
		{"1.005 * 1", "1.0", ""},
		{"2.675 * 1", "2.67", ""},
		{"1 / 0", "", "division by zero"},
		{"1.0 / 0", "", "float division by zero"},
		{"1 // 0", "", "integer division or modulo by zero"},
		{"2 +", "", "invalid syntax (<string>, line 1)"},
		{"", "", "invalid syntax (<string>, line 1)"},
		{"(1", "", "invalid syntax (<string>, line 1)"},
		{"2 3", "", "invalid syntax (<string>, line 1)"},
		{"012", "", "leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers (<string>, line 1)"},
		{"2 (3)", "", "'int' object is not callable"},
		{"()", "", "float() argument must be a string or a real number, not 'tuple'"},
		{"10 ** 400", "", "int too large to convert to float"},
		{"import os", "", "invalid characters in expression"},
	} {
		got, err := Calculate(tc.expr)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("Calculate(%q) = %q, %v; want error %q", tc.expr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Calculate(%q) = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
}

func TestRound2(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{
		{2.675, 2.67}, {1.005, 1.0}, {0.125, 0.12}, {0.375, 0.38}, {283.59000000000003, 283.59}, {-1.555, -1.55},
	} {
		if got := round2(tc.in); got != tc.want {
			t.Errorf("round2(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	if v, _ := pyRound2(int64(9)); v != int64(9) {
		t.Errorf("round of an int changed kind: %v", v)
	}
}

func TestOutputsAndPassHatK(t *testing.T) {
	found := OutputsFound([]string{"1000", "Gold"}, []string{"You paid $1,000 in total.", "no"})
	if !found["1000"] || found["Gold"] {
		t.Errorf("found %v", found)
	}
	got := PassHatK([]int{4, 2, 0}, 4)
	want := []float64{0.5, (1 + 1.0/6) / 3, 1.0 / 3, 1.0 / 3}
	for k := range want {
		if math.Abs(got[k]-want[k]) > 1e-12 {
			t.Errorf("pass^%d = %v, want %v", k+1, got[k], want[k])
		}
	}
	if !Success(0.9999999) || Success(0.99) {
		t.Error("Success threshold")
	}
}

func TestToolCatalogue(t *testing.T) {
	for name, n := range map[string]int{Airline: 14, Retail: 16} {
		tools, err := ToolCatalogue(name)
		if err != nil || len(tools) != n {
			t.Fatalf("%s: %d tools, %v", name, len(tools), err)
		}
		for _, tool := range tools {
			if tool.Description == "" || !strings.Contains(string(tool.Parameters), `"type": "object"`) {
				t.Errorf("%s/%s: incomplete schema", name, tool.Name)
			}
		}
	}
	if _, err := ToolCatalogue("hotel"); err == nil {
		t.Error("hotel catalogue")
	}
}

func TestPyStrRepr(t *testing.T) {
	for in, want := range map[string]string{
		"plain": `'plain'`, "it's": `"it's"`, `both ' and "`: `'both \' and "'`, "a\\b": `'a\\b'`,
		"\x01\x7f": `'\x01\x7f'`, "café": `'café'`, "nb\u00a0sp": `'nb\xa0sp'`, "z\u200bw": `'z\u200bw'`, "\U000e0001": `'\U000e0001'`,
	} {
		if got := string(appendPyStrRepr(nil, in)); got != want {
			t.Errorf("repr(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, seed := range []string{`{"a": [1, 2.5, "x", null, true]}`, `[]`, `"\ud83d\ude00"`, `-0.0`, `1e400`, `{"a":1,"a":2}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseJSON(data)
		if err != nil {
			return
		}
		out := ToPyJSON(v)
		w, err := ParseJSON([]byte(out))
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !Equal(v, w) {
			t.Fatalf("round trip changed the value: %q -> %q", data, out)
		}
		_ = appendCanon(nil, v)
	})
}
