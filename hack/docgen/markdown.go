package main

import "strings"

// cell makes text one Markdown table cell: the pipe would end the cell, a newline the row;
// < and > would be taken for HTML (GitHub drops usage texts' "<controller>"), and a pair of
// asterisks (--controllers' '*') for emphasis.
func cell(text string) string {
	text = strings.TrimSpace(text)
	text = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;", "*", `\*`).Replace(text)
	lines := strings.Split(text, "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, "<br>")
}

// code is text as a Markdown code span inside a table cell.
func code(text string) string {
	if text == "" {
		return ""
	}
	fence := "`"
	if strings.Contains(text, "`") {
		fence = "``"
	}
	pad := ""
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		pad = " "
	}
	return fence + pad + strings.ReplaceAll(text, "|", `\|`) + pad + fence
}

// tableHeader writes the header of a table of the given columns.
func tableHeader(b *strings.Builder, columns ...string) {
	b.WriteString("| " + strings.Join(columns, " | ") + " |\n|")
	for range columns {
		b.WriteString("---|")
	}
	b.WriteString("\n")
}

// tableRow writes one row of already formatted cells.
func tableRow(b *strings.Builder, cells ...string) {
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}
