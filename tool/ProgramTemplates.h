#pragma once
// The tool parses a unit as a prefix (TU_Prefix): clang then leaves the bodies of the
// function templates the program uses uninstantiated at the end of the unit. Most of them
// are LibTorch's (data loaders, modules, optimizers: about nine tenths of a parse's time,
// 6.3 s -> 0.5 s on a corpus program), and no rule looks into them. The program's own
// templates are instantiated here, so that rules see their instantiations and a program
// whose template does not compile is refused as before.

namespace clang {
class Sema;
}

namespace accel {

// Instantiates the pending function and variable templates whose pattern is the program's
// (not a system or LibTorch header), and the vtables they use; drops the others.
void instantiateProgramTemplates(clang::Sema& S);

} // namespace accel
