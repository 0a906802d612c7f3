#include "common/check.h"
int main(void){CHECK(1);return check_finish();}
