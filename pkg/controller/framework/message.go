package framework

import "unicode/utf8"

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
