/* A hostile but valid program: 8 threads allocate blocks of every size (small, medium, large, aligned
 * from 8 B to 128 KiB, calloc'd, realloc'd), mostly never write them, and trade them through 4096 shared
 * slots with atomic exchanges, so most frees are cross-thread frees of blocks nobody wrote (the case a
 * double-free check must never mistake for a double free). Meanwhile the main thread forks five times per
 * round; each child allocates, runs a thread of the same work and exits. Three rounds, then everything is
 * freed. Prints "ok". Argument: operations per thread (default 200000). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <sys/wait.h>
#include <malloc.h>
#define SLOTS 4096
static _Atomic(void*) slots[SLOTS];
static unsigned long iters;
static unsigned rnd(unsigned *s){ *s = *s*1103515245u+12345u; return *s>>8; }
static size_t rsize(unsigned *s){ unsigned r=rnd(s)%100; if(r<70) return 1+rnd(s)%256; if(r<95) return 1+rnd(s)%5000; if(r<99) return 1+rnd(s)%300000; return 1+rnd(s)%(3<<20);}
static void* body(void*a){ unsigned s=(unsigned)(long)a*7919+1; void* mine[32]={0};
  for(unsigned long i=0;i<iters;i++){
    unsigned op=rnd(&s)%10; unsigned k=rnd(&s)%32;
    if(op<4){ free(mine[k]); size_t n=rsize(&s); mine[k]= (rnd(&s)%4==0)? calloc(1,n) : malloc(n); if(!mine[k]) abort(); if(rnd(&s)%3==0) ((char*)mine[k])[n-1]=1; }
    else if(op<6){ void* p=mine[k]; mine[k]=NULL; void* q=atomic_exchange(&slots[rnd(&s)%SLOTS], p); free(q);}
    else if(op<7){ if(mine[k]){ size_t n=rsize(&s); void*q=realloc(mine[k], n); if(!q) abort(); mine[k]=q; } }
    else if(op<8){ void* p; size_t al=(size_t)1<<(3+rnd(&s)%15); if(posix_memalign(&p, al, rsize(&s))) abort(); if((size_t)p & (al-1)) abort(); free(mine[k]); mine[k]=p; }
    else { void*p=malloc(rsize(&s)); free(p); }
  }
  for(int k=0;k<32;k++) free(mine[k]); return 0;}
int main(int argc,char**argv){ iters = argc>1? strtoul(argv[1],0,10):200000; int T=8;
  for(int round=0; round<3; round++){
    pthread_t t[8]; for(int i=0;i<T;i++) pthread_create(&t[i],0,body,(void*)(long)(i+round*8));
    for(int f=0;f<5;f++){ usleep(20000); pid_t pid=fork(); if(pid==0){ void*x[100]; for(int i=0;i<100;i++) x[i]=malloc(i*37+1); for(int i=0;i<100;i++) free(x[i]); pthread_t c; pthread_create(&c,0,body,(void*)99L); pthread_join(c,0); _exit(0);} int st; waitpid(pid,&st,0); if(!WIFEXITED(st)||WEXITSTATUS(st)) { fprintf(stderr,"child failed %d\n",st); return 1;} }
    for(int i=0;i<T;i++) pthread_join(t[i],0);
  }
  for(int i=0;i<SLOTS;i++) free(slots[i]);
  puts("ok"); return 0;}
