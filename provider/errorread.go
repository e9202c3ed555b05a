package provider

import (
	"bytes"
	"io"
	"strconv"
	"unicode/utf8"
)

// ReadErrorBody reads at most MaxErrorBody of an error answer's body r and
// returns it with creds (Credentials) redacted (RedactCredentials), and with
// every credential header it echoes (RedactAuthEchoBody): a proxy's key pgw
// does not know shows in neither; a JSON body stays JSON. When the
// body is longer, the cut leaves no part of a credential behind: a
// credential that straddles it would otherwise show its first bytes, which
// no whole-credential replacement finds. The tail that begins one of creds
// is dropped, as written and, in a JSON string cut open, as decoded (a
// \u0073k… escape); so is a rune cut in half, so that the text is still
// UTF-8 for the error's message.
func ReadErrorBody(r io.Reader, creds []string) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, MaxErrorBody+1))
	if len(b) > MaxErrorBody {
		b = cutClean(b[:MaxErrorBody], creds)
	}
	return RedactAuthEchoBody(RedactCredentials(b, creds))
}

// cutClean returns b, the head of a longer body, without the tail that
// begins one of creds and without a rune cut in half.
func cutClean(b []byte, creds []string) []byte {
	end := len(b) - credentialTail(b, creds)
	if looksJSON(b) {
		if open, ok := openString(b); ok {
			end = min(end, open+decodedCredentialTail(b[open:], creds))
		}
	}
	b = b[:end]
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				b = b[:i]
			}
			break
		}
	}
	return b
}

// credentialTail returns the length of the longest tail of b that is a
// proper prefix of one of creds, 0 when none is.
func credentialTail(b []byte, creds []string) int {
	n := 0
	for _, c := range creds {
		for k := min(len(c)-1, len(b)); k > n; k-- {
			if bytes.HasSuffix(b, []byte(c[:k])) {
				n = k
				break
			}
		}
	}
	return n
}

// looksJSON reports whether b opens as a JSON object or array does.
func looksJSON(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == '[')
}

// openString returns the index just past the opening quote of the string
// JSON text b ends inside of, and false when b does not end in a string.
func openString(b []byte) (int, bool) {
	open := -1
	for i := 0; i < len(b); i++ {
		switch {
		case open < 0 && b[i] == '"':
			open = i + 1
		case open >= 0 && b[i] == '\\':
			i++
		case open >= 0 && b[i] == '"':
			open = -1
		}
	}
	return open, open >= 0
}

// decodedCredentialTail returns the offset in s, the raw text of a JSON
// string cut open (its opening quote excluded), of the first escape unit of
// the longest decoded tail that is a proper prefix of one of creds; len(s)
// when none is. A unit cut in half (a lone backslash, a \u with fewer than
// four digits) is dropped too.
func decodedCredentialTail(s []byte, creds []string) int {
	var text []byte
	var starts []int // starts[j]: offset in s of the unit that wrote text[j]
	for i := 0; i < len(s); {
		var r []byte
		n := 1
		switch {
		case s[i] != '\\':
			r = s[i : i+1]
		case i+1 >= len(s):
			return min(i, tailStart(text, starts, creds, len(s)))
		case s[i+1] == 'u':
			if i+6 > len(s) {
				return min(i, tailStart(text, starts, creds, len(s)))
			}
			v, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
			if err != nil {
				return len(s) // not a JSON string: the raw form was checked
			}
			r, n = utf8.AppendRune(nil, rune(v)), 6
			if utf16Surrogate(rune(v)) && i+12 <= len(s) && s[i+6] == '\\' && s[i+7] == 'u' {
				if lo, err := strconv.ParseUint(string(s[i+8:i+12]), 16, 32); err == nil && lo >= 0xDC00 && lo < 0xE000 {
					r, n = utf8.AppendRune(nil, (rune(v)-0xD800)<<10|(rune(lo)-0xDC00)+0x10000), 12
				}
			}
		default:
			r, n = unescape(s[i+1]), 2
		}
		for range r {
			starts = append(starts, i)
		}
		text = append(text, r...)
		i += n
	}
	return tailStart(text, starts, creds, len(s))
}

// tailStart maps the longest tail of decoded text that begins one of creds
// back to the offset of its first unit; whole when there is none.
func tailStart(text []byte, starts []int, creds []string, whole int) int {
	if n := credentialTail(text, creds); n > 0 {
		return starts[len(text)-n]
	}
	return whole
}

func utf16Surrogate(r rune) bool { return r >= 0xD800 && r < 0xDC00 }

// unescape is the byte a two-character JSON escape stands for.
func unescape(c byte) []byte {
	switch c {
	case 'b':
		return []byte{'\b'}
	case 'f':
		return []byte{'\f'}
	case 'n':
		return []byte{'\n'}
	case 'r':
		return []byte{'\r'}
	case 't':
		return []byte{'\t'}
	}
	return []byte{c} // \" \\ \/
}
