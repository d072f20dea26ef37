package framework

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// TruncateMessage cuts s to at most n bytes between two characters, marking the cut with "…",
// for messages written into status. The cut must not split a character: the API encodes JSON,
// which turns invalid UTF-8 into U+FFFD, so a message cut mid-character would come back other
// than it was written, look changed on every reconcile and be written again, forever.
func TruncateMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// JoinMessages joins the first max messages with "; " and counts the rest ("; and 3 more"), so
// that a status quoting one message per resource or component stays small however many there are.
func JoinMessages(messages []string, max int) string {
	if len(messages) <= max {
		return strings.Join(messages, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(messages[:max], "; "), len(messages)-max)
}
