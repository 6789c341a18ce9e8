// The smallest Ember program: it compiles against the installed headers, links libember and
// runs without Python.
#include <ember/ember.h>

#include <iostream>

int main() {
    std::cout << ember::show_config();
    return ember::library_version() == ember::version() ? 0 : 1;
}
