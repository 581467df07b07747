package js

func (x *exec) guardRegExp()      {}
func (x *exec) guardTypedArrays() {}
