// ember::data: datasets, samplers, transforms and the DataLoader (libtorch's torch::data).
//
//   #include <ember/data.h>
//   auto loader = ember::data::make_data_loader(
//       ember::data::datasets::TensorDataset(x, y),
//       ember::data::DataLoaderOptions().batch_size(64).shuffle(true).seed(0).workers(2));
//   for (auto& batch : *loader) { ... batch.data ... batch.target ... }
#pragma once

#include <ember/data/example.h>
#include <ember/data/datasets.h>
#include <ember/data/transforms.h>
#include <ember/data/samplers.h>
#include <ember/data/dataloader.h>
