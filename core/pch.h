// Precompiled header for cellscope_core: the expensive LibTorch headers, narrowly.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/functional.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim.h>
#include <torch/serialize.h>
#include <torch/types.h>
#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>
