package suggest

import "testing"

func TestClosest(t *testing.T) {
	flags := []string{"input", "json", "language", "server", "timeout", "tls", "tls-ca"}
	tests := []struct {
		name, typo, want string
	}{
		{"transposed letters", "inptu", "input"},
		{"one letter missing", "timout", "timeout"},
		{"one letter extra", "jsonn", "json"},
		{"a short name allows one edit", "tsl", ""},
		{"a short name one edit away", "tl", "tls"},
		{"too far", "record", ""},
		{"exact", "server", "server"},
		{"ties go alphabetically", "tls-c", "tls-ca"},
		{"no candidates", "x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := flags
			if tt.typo == "x" {
				cands = nil
			}
			if got := Closest(tt.typo, cands); got != tt.want {
				t.Errorf("Closest(%q) = %q, want %q", tt.typo, got, tt.want)
			}
		})
	}
}
