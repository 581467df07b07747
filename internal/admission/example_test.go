package admission_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ptcrun/ptc/internal/admission"
)

func ExampleController_Acquire() {
	c, err := admission.New(admission.Config{MaxConcurrent: 1, MaxQueue: 0, MaxWait: time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	release, waited, err := c.Acquire(context.Background(), "acme", 0)
	fmt.Println(err, waited)

	// The only slot is taken and nothing may queue: refused with a hint.
	_, _, err = c.Acquire(context.Background(), "acme", 0)
	var r *admission.Rejected
	fmt.Println(errors.As(err, &r), r.Reason)

	release()
	fmt.Println(c.Running())
	// Output:
	// <nil> 0s
	// true queue_full
	// 0
}
