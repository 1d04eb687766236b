package inception

import "strings"

// WordIndex returns the first whole-word occurrence of w in s, or -1.
func WordIndex(s, w string) int {
	for off := 0; ; {
		i := strings.Index(s[off:], w)
		if i < 0 {
			return -1
		}
		i += off
		off = i + len(w)
		if (i == 0 || !asciiWord(s[i-1])) && (off == len(s) || !asciiWord(s[off])) {
			return i
		}
	}
}

// asciiWord matches RE2's \b notion of a word character.
func asciiWord(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}
