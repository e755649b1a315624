#pragma once
// No LibTorch here: main.cpp sees none.
int run_app(int argc, char** argv);
