package jsnest

import "github.com/dop251/goja/ast"

// LeftmostFunction returns the function literal that starts x, if any:
// x itself, or the leftmost operand of the expression x is. A wrapper
// function closed early is the leftmost operand of what the text after it
// made of it (a call, a sequence, a binary expression...).
func LeftmostFunction(x ast.Expression) *ast.FunctionLiteral {
	for i := 0; i < 1000 && x != nil; i++ {
		switch e := x.(type) {
		case *ast.FunctionLiteral:
			return e
		case *ast.BinaryExpression:
			x = e.Left
		case *ast.SequenceExpression:
			if len(e.Sequence) == 0 {
				return nil
			}
			x = e.Sequence[0]
		case *ast.CallExpression:
			x = e.Callee
		case *ast.DotExpression:
			x = e.Left
		case *ast.BracketExpression:
			x = e.Left
		case *ast.ConditionalExpression:
			x = e.Test
		case *ast.AssignExpression:
			x = e.Left
		case *ast.TemplateLiteral:
			x = e.Tag
		case *ast.OptionalChain:
			x = e.Expression
		case *ast.Optional:
			x = e.Expression
		default:
			return nil
		}
	}
	return nil
}
