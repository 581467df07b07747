package wasm

import "fmt"

// code reads instructions up to the end of a function body (or, with
// constant, of a constant expression), counting the nesting depth and the
// targets of br_table against the bounds. It knows the immediates of every
// instruction of WebAssembly 2.0 (with SIMD) and of the threads proposal;
// an instruction it does not know ends the check with an error, as wazero
// would refuse it too.
func (c *structure) code(r *reader, constant bool) error {
	b := c.b
	depth := 1 // the body's own block
	for {
		op, ok := r.byte()
		if !ok {
			return fmt.Errorf("%w: an expression ends before its end instruction", ErrInvalidModule)
		}
		switch {
		case op == 0x02 || op == 0x03 || op == 0x04: // block, loop, if
			if constant {
				return badConst(op)
			}
			if err := r.blockType(); err != nil {
				return err
			}
			if depth++; depth > b.MaxNesting {
				return over(fmt.Sprintf("function body %d nests blocks deeper than", c.bodies-1), uint64(depth), b.MaxNesting, "MaxNesting")
			}
		case op == 0x0b: // end
			if depth--; depth == 0 {
				return nil
			}
		case op == 0x0e: // br_table
			n, ok := r.count()
			if !ok {
				return errBadBinary
			}
			if n > b.MaxBranchTargets {
				return over(fmt.Sprintf("function body %d has a br_table of targets", c.bodies-1), uint64(n), b.MaxBranchTargets, "MaxBranchTargets")
			}
			if c.brTargets += uint64(n); c.brTargets > uint64(b.MaxBranchTableTargets) {
				return over("its br_tables have targets", c.brTargets, b.MaxBranchTableTargets, "MaxBranchTableTargets")
			}
			for i := 0; i <= n; i++ { // the targets and the default
				if err := r.skipU32(); err != nil {
					return err
				}
			}
		default:
			if err := r.immediates(op); err != nil {
				return err
			}
		}
	}
}

func badConst(op byte) error {
	return fmt.Errorf("%w: instruction %#x is not allowed in a constant expression", ErrInvalidModule, op)
}

// blockType reads the type of a block, loop or if: empty, a value type or
// a type index.
func (r *reader) blockType() error {
	t, ok := r.byte()
	if !ok {
		return errBadBinary
	}
	switch t {
	case 0x40, 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
		return nil
	}
	r.p--
	_, ok = r.sleb(33)
	return okOrBad(ok)
}

// memarg reads a memory access's alignment and offset.
func (r *reader) memarg() error {
	if _, ok := r.u32(); !ok {
		return errBadBinary
	}
	_, ok := r.uleb(64)
	return okOrBad(ok)
}

func (r *reader) skip(n int) error {
	if n > len(r.b)-r.p {
		return errBadBinary
	}
	r.p += n
	return nil
}

// immediates skips the immediates of instruction op (not block, loop,
// if, end or br_table).
func (r *reader) immediates(op byte) error {
	switch {
	case op == 0x00 || op == 0x01 || op == 0x05 || op == 0x0f || op == 0x1a || op == 0x1b || op == 0xd1:
		// unreachable nop else return drop select ref.is_null
		return nil
	case op == 0x0c || op == 0x0d || op == 0x10 || op == 0x12 || op == 0xd2 || (op >= 0x20 && op <= 0x26):
		// br br_if call return_call ref.func local.* global.* table.get/set
		return r.skipU32()
	case op == 0x11 || op == 0x13: // call_indirect, return_call_indirect
		if err := r.skipU32(); err != nil {
			return err
		}
		return r.skipU32()
	case op == 0x1c: // select t*
		n, ok := r.count()
		if !ok {
			return errBadBinary
		}
		for i := 0; i < n; i++ {
			if err := r.valType(); err != nil {
				return err
			}
		}
		return nil
	case op >= 0x28 && op <= 0x3e: // loads and stores
		return r.memarg()
	case op == 0x3f || op == 0x40: // memory.size, memory.grow
		return r.skipU32()
	case op == 0x41:
		_, ok := r.sleb(32)
		return okOrBad(ok)
	case op == 0x42:
		_, ok := r.sleb(64)
		return okOrBad(ok)
	case op == 0x43:
		return r.skip(4)
	case op == 0x44:
		return r.skip(8)
	case op >= 0x45 && op <= 0xc4: // numeric, sign extension
		return nil
	case op == 0xd0: // ref.null heaptype
		_, ok := r.sleb(33)
		return okOrBad(ok)
	case op == 0xfc:
		return r.miscImmediates()
	case op == 0xfd:
		return r.simdImmediates()
	case op == 0xfe:
		return r.atomicImmediates()
	}
	return fmt.Errorf("%w: unknown or unsupported instruction %#x", ErrInvalidModule, op)
}

// miscImmediates skips a 0xfc instruction (saturating truncation, bulk
// memory, tables).
func (r *reader) miscImmediates() error {
	sub, ok := r.u32()
	if !ok {
		return errBadBinary
	}
	n := 0
	switch {
	case sub <= 7: // trunc_sat
	case sub == 9 || sub == 11 || sub == 13 || (sub >= 15 && sub <= 17): // data.drop memory.fill elem.drop table.grow/size/fill
		n = 1
	case sub == 8 || sub == 10 || sub == 12 || sub == 14: // memory.init memory.copy table.init table.copy
		n = 2
	default:
		return fmt.Errorf("%w: unknown or unsupported instruction 0xfc %d", ErrInvalidModule, sub)
	}
	for i := 0; i < n; i++ {
		if err := r.skipU32(); err != nil {
			return err
		}
	}
	return nil
}

// simdImmediates skips a 0xfd (SIMD) instruction.
func (r *reader) simdImmediates() error {
	sub, ok := r.u32()
	if !ok {
		return errBadBinary
	}
	switch {
	case sub <= 11 || sub == 92 || sub == 93: // loads and stores
		return r.memarg()
	case sub == 12 || sub == 13: // v128.const, i8x16.shuffle
		return r.skip(16)
	case sub >= 21 && sub <= 34: // extract_lane, replace_lane
		return r.skip(1)
	case sub >= 84 && sub <= 91: // load_lane, store_lane
		if err := r.memarg(); err != nil {
			return err
		}
		return r.skip(1)
	case sub <= 0x113:
		return nil
	}
	return fmt.Errorf("%w: unknown or unsupported instruction 0xfd %d", ErrInvalidModule, sub)
}

// atomicImmediates skips a 0xfe (threads) instruction.
func (r *reader) atomicImmediates() error {
	sub, ok := r.u32()
	if !ok {
		return errBadBinary
	}
	switch {
	case sub == 3: // atomic.fence
		return r.skip(1)
	case sub <= 0x4e:
		return r.memarg()
	}
	return fmt.Errorf("%w: unknown or unsupported instruction 0xfe %d", ErrInvalidModule, sub)
}
