package python

import "testing"

func TestIntegralFloats(t *testing.T) {
	cases := []struct{ in, want string }{
		{`3000.0`, `3000`},
		{`[1.0,-2.0,0.5,1e+16,2.50,-0.0,10.00]`, `[1,-2,0.5,1e+16,2.50,0,10]`},
		{`{"a.0":"1.0 \"2.0\"","b":[3.0]}`, `{"a.0":"1.0 \"2.0\"","b":[3]}`},
		{`"\\"`, `"\\"`},
		{`true`, `true`},
	}
	for _, c := range cases {
		if got := string(integralFloats([]byte(c.in))); got != c.want {
			t.Errorf("integralFloats(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}
