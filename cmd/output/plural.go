package output

import "github.com/dustin/go-humanize"

// Plural is "1 message", "2 messages", "1,000 messages".
func Plural(n uint64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return humanize.Comma(int64(n)) + " " + noun + "s"
}
