// The single include of every generated simkit module (CPU and CUDA alike).
#pragma once
#include "base.h"
#include "vec.h"
#include "array.h"
